/* nn kernels: spatial convolutions (Torch7's THNN counterparts). */
#ifndef LT_NN_SPATIALCONV_H
#define LT_NN_SPATIALCONV_H


#endif
