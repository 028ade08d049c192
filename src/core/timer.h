#ifndef M2_TIMER_H
#define M2_TIMER_H
double m2_now_s(void);   /* monotonic seconds */
#endif
