/* nn kernels: activations and pointwise layers (Torch7's THNN counterparts). */
#ifndef LT_NN_POINTWISE_H
#define LT_NN_POINTWISE_H

/* ---- Elementwise activations: one forward and one backward entry point,
 * selected by an op code (a, b are the op's scalar arguments).
 *   op                   y = f(x)                              backward reads  */
enum lt_nn_pointwise_op {
  LT_PW_TANH = 1,    /* tanh(x)                                 y              */
  LT_PW_SIGMOID,     /* 1/(1+exp(-x))                           y              */
  LT_PW_HARDTANH,    /* clamp(x, a, b)                          x (y in place) */
  LT_PW_LEAKYRELU,   /* x > 0 ? x : a*x                         x (y in place) */
  LT_PW_ELU,         /* x <= 0 ? a*(exp(x)-1) : x               y              */
  LT_PW_SOFTPLUS,    /* a*x > b ? x : log1p(exp(a*x))/a         y              */
  LT_PW_SOFTSIGN,    /* x/(1+|x|)                               x              */
  LT_PW_SOFTSHRINK,  /* x > a ? x-a : x < -a ? x+a : 0          x              */
  LT_PW_HARDSHRINK,  /* |x| > a ? x : 0                         x              */
  LT_PW_TANHSHRINK,  /* x - tanh(x)                             x              */
  LT_PW_LOGSIGMOID,  /* -log(1+exp(-x))                         x              */
  LT_PW_ABS,         /* |x|                                     x              */
  LT_PW_EXP,         /* exp(x)                                  y              */
  LT_PW_LOG,         /* log(x)                                  x              */
  LT_PW_SQRT,        /* sqrt(x + a)                             y              */
  LT_PW_SQUARE,      /* x*x                                     x              */
  LT_PW_POWER,       /* x^a                                     x              */
  LT_PW_THRESHOLD,   /* x > a ? x : b  (gradient where x > a)   x (y in place: */
                     /*   b <= a there, as nn.Threshold asks)                  */
  LT_PW_LAST
};
/* Forward: inplace writes into input and makes output a view of it.
 * Backward: gi = dy * f'(ref), ref the tensor named above; inplace writes into
 * gradOutput and makes gradInput a view of it. Any strides; float and double. */
int lt_nn_pointwise_updateOutput(int op, lt_tensor *input, lt_tensor *output, double a, double b, int inplace);
int lt_nn_pointwise_updateGradInput(int op, lt_tensor *ref, lt_tensor *gradOutput, lt_tensor *gradInput, double a,
                                    double b, int inplace);

/* ---- PReLU(nOutputPlane): y = x > 0 ? x : w[c] * x, c the channel of the
 * element (nOutputPlane 0: one shared weight). Channels are dim 1 of a 1-D or
 * 3-D input and dim 2 of a 2-D or 4-D (batched) one. The gradient of the
 * weight accumulates scale * sum over x <= 0 of x * dy. */
int lt_nn_PReLU_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight, int64_t nOutputPlane);
int lt_nn_PReLU_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput, lt_tensor *weight,
                                int64_t nOutputPlane);
int lt_nn_PReLU_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                  int64_t nOutputPlane, double scale);

/* ---- GatedLinearUnit on a CUDA tensor (cunn's GPU version): the input's halves a, b along dim (0-based, of even
 * size) give a * sigmoid(b) into output (gradOutput NULL), or with gradOutput the gradient into result, the
 * input's shape (Float, Double and Half, computed in float for Half; gradOutput of any layout). */
int lt_cuda_nn_glu(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result, int dim);

/* ---- Normalize(p, eps): each row x of a 1-D (one row) or 2-D (N x D) input
 * becomes x / norm, norm = (sum |x|^p + eps)^(1/p), or max |x| + eps for
 * p = inf (pass HUGE_VAL); norm (N values) is kept for the backward. */
int lt_nn_Normalize_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *norm, double p, double eps);
int lt_nn_Normalize_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput, lt_tensor *norm,
                                    double p, double eps);
/* The same on CUDA tensors (cunn's GPU version): forward (gradOutput NULL) into result and norm, or the gradient
 * into result; any layouts; Float, Double and Half (in float). */
int lt_cuda_nn_normalize(const lt_tensor *input, const lt_tensor *gradOutput, lt_tensor *result, lt_tensor *norm,
                         double p, double eps);

#endif
