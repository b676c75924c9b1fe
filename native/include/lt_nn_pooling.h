/* nn kernels: pooling and normalization layers (Torch7's THNN counterparts). */
#ifndef LT_NN_POOLING_H
#define LT_NN_POOLING_H


#endif
