#ifndef M2_TIMER_H
#define M2_TIMER_H
double m2_now_s(void);   /* monotonic seconds */
/* CPU seconds of the whole process (all threads): on a shared, oversubscribed machine this counts
 * the work done rather than the time spent waiting for a core (the benchmarks' second clock). */
double m2_process_cpu_s(void);
#endif
