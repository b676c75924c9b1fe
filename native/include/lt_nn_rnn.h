/* nn kernels: one time step of cuDNN's recurrent cells, the elementwise part
 * (cudnn.RNN and its subclasses do the matrix products with addmm). */
#ifndef LT_NN_RNN_H
#define LT_NN_RNN_H

/* The cell kinds, numbered as cuDNN's cudnnRNNMode_t. G gates per cell:
 *   RELU, TANH  G = 1   h = act(a + r)
 *   LSTM        G = 4   gates i, f, g, o:  i, f, o = sigmoid, g = tanh;
 *                       c = f*c' + i*g, h = o*tanh(c)
 *   GRU         G = 3   gates r, z, n:  r, z = sigmoid(a + r_);
 *                       n = tanh(a_n + r*rec_n), h = (1-z)*n + z*h'
 * where a = W x + bW (the input side), rec = R h' + bR (the recurrent side),
 * h', c' the previous step's state. */
enum lt_nn_rnn_mode { LT_RNN_RELU = 0, LT_RNN_TANH = 1, LT_RNN_LSTM = 2, LT_RNN_GRU = 3 };

/* Every matrix is B rows of G*H (gates, rec, dgates, drec) or of H (the
 * states) elements; rows may be strided, elements within a row contiguous.
 * biasW, biasR: G*H contiguous vectors.
 *
 * Forward: gates holds W x on entry and the gate activations on return
 * (RELU/TANH: h itself); rec holds R h' on entry (zeros for a zero state)
 * and R h' + bR on return. hprev (GRU) and cprev (LSTM) may be NULL for a
 * zero state. Writes h (and c for LSTM). */
int lt_nn_rnn_cell_forward(int mode, lt_tensor *gates, lt_tensor *rec, lt_tensor *biasW, lt_tensor *biasR,
                           lt_tensor *hprev, lt_tensor *cprev, lt_tensor *h, lt_tensor *c);

/* Backward of one step, from what the forward left (gates, rec, hprev,
 * cprev, c) and dh, the whole gradient of h. LSTM: dc holds the gradient
 * of c from later steps on entry and that of c' on return. Writes dgates,
 * the gradient of W x + bW; GRU also writes drec (the gradient of R h' + bR,
 * for the others it equals dgates: pass NULL) and dhprev = dh*z, the part of
 * h''s gradient that does not go through R. */
int lt_nn_rnn_cell_backward(int mode, lt_tensor *gates, lt_tensor *rec, lt_tensor *hprev, lt_tensor *cprev,
                            lt_tensor *c, lt_tensor *dh, lt_tensor *dc, lt_tensor *dgates, lt_tensor *drec,
                            lt_tensor *dhprev);

#endif
