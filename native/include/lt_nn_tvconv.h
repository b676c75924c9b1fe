/* nn kernels: temporal and volumetric convolutions (Torch7's THNN counterparts). */
#ifndef LT_NN_TVCONV_H
#define LT_NN_TVCONV_H


#endif
