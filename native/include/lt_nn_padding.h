/* nn kernels: paddings, upsampling, dropouts, shuffles (Torch7's THNN counterparts). */
#ifndef LT_NN_PADDING_H
#define LT_NN_PADDING_H


#endif
