# m2_git_commit(DIR OUT_VAR): the commit the source tree DIR is checked out at, as 12 hex digits,
# with "-dirty" when tracked files differ from it; "unknown" when DIR is not the top of a git
# work tree (a release tarball) or git is missing. DIR must be the top itself: a tarball unpacked
# inside some other repository would otherwise report that repository's commit.
#
# Script mode, for tests:  cmake -DM2_DIR=PATH -P cmake/git_commit.cmake   prints the result.
function(m2_git_commit dir out_var)
  set(commit "unknown")
  find_program(M2_GIT_EXECUTABLE git)
  if(M2_GIT_EXECUTABLE)
    execute_process(COMMAND ${M2_GIT_EXECUTABLE} -C ${dir} rev-parse --show-toplevel
                    OUTPUT_VARIABLE top RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(rc EQUAL 0)
      file(REAL_PATH "${top}" top_real)
      file(REAL_PATH "${dir}" dir_real)
    endif()
    if(rc EQUAL 0 AND top_real STREQUAL dir_real)
      execute_process(COMMAND ${M2_GIT_EXECUTABLE} -C ${dir} rev-parse --short=12 HEAD
                      OUTPUT_VARIABLE head RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(rc EQUAL 0 AND head MATCHES "^[0-9a-f]+$")
        set(commit "${head}")
        # refresh first, or a file merely touched since the last git command counts as changed;
        # then exit status 1 = tracked files differ from HEAD (untracked files do not count)
        execute_process(COMMAND ${M2_GIT_EXECUTABLE} -C ${dir} update-index -q --refresh
                        OUTPUT_QUIET ERROR_QUIET)
        execute_process(COMMAND ${M2_GIT_EXECUTABLE} -C ${dir} diff-index --quiet HEAD --
                        RESULT_VARIABLE dirty OUTPUT_QUIET ERROR_QUIET)
        if(dirty EQUAL 1)
          set(commit "${commit}-dirty")
        endif()
      endif()
    endif()
  endif()
  set(${out_var} "${commit}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND DEFINED M2_DIR)
  m2_git_commit("${M2_DIR}" c)
  execute_process(COMMAND ${CMAKE_COMMAND} -E echo "${c}")
endif()
