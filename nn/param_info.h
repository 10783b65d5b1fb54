/*  param_info — one parameter tensor's entry in the flat parameter buffer: its reference
    state_dict name, offset, size and shape. The description's parameter table holds them
    (nn/net.h, pf_net.tensors) and the model hands them out (nn/model.h,
    pf_model_tensor_info); a header of its own so that neither of the two includes the other.
*/
#ifndef PF_PARAM_INFO_H
#define PF_PARAM_INFO_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char name[96];      /* reference state_dict name */
    size_t offset;      /* into the flat parameter (and gradient) buffer, in floats */
    size_t numel;
    int ndim;
    int64_t shape[4];   /* OIHW for conv weights, (O) for biases */
} pf_param_info;
#endif
