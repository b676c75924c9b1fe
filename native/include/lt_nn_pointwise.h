/* nn kernels: activations and pointwise layers (Torch7's THNN counterparts). */
#ifndef LT_NN_POINTWISE_H
#define LT_NN_POINTWISE_H


#endif
