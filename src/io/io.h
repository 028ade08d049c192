/* io/: model and tokenizer files. One include for all of it. */
#ifndef M2_IO_H
#define M2_IO_H
#include "io/ggml_type.h"
#include "io/afile.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "io/hf_config.h"
#include "io/model_load.h"
#include "io/peft.h"
#include "io/tokenizer.h"
#include "io/chat.h"
#include "io/bundle.h"
#endif
