/* See fp16.c. */

#ifndef FP16_h
#define FP16_h
float from_half(uint16_t h);
uint16_t to_half(float f);
#endif
