"""Caffe's NetParameter messages, made at run time with the protobuf package (no protoc, no Caffe), to write
Caffe models: the .caffemodel (binary) and the .prototxt (text format).

Only the fields that tests/test_loadcaffe.py and `luatorch programs neural-style` write are declared, with
caffe.proto's field numbers, so the files come from Google's protobuf library, independently of the Lua reader
in lua/loadcaffe. Needs the `protobuf` package (the test extra)."""
try:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
except ImportError as e:   # an optional dependency (the test extra)
    raise ImportError("writing Caffe models needs the protobuf package: pip install protobuf") from e

F = descriptor_pb2.FieldDescriptorProto
OPT, REP = F.LABEL_OPTIONAL, F.LABEL_REPEATED
T = {"int32": F.TYPE_INT32, "uint32": F.TYPE_UINT32, "int64": F.TYPE_INT64, "float": F.TYPE_FLOAT,
     "double": F.TYPE_DOUBLE, "bool": F.TYPE_BOOL, "string": F.TYPE_STRING}

# message name -> [(field name, number, label, type or message/enum name, packed)]
MESSAGES = {
    "BlobShape": [("dim", 1, REP, "int64", True)],
    "BlobProto": [("shape", 7, OPT, ".caffe.BlobShape", False),
                  ("data", 5, REP, "float", True),
                  ("double_data", 8, REP, "double", True),
                  ("num", 1, OPT, "int32", False), ("channels", 2, OPT, "int32", False),
                  ("height", 3, OPT, "int32", False), ("width", 4, OPT, "int32", False)],
    "ConvolutionParameter": [("num_output", 1, OPT, "uint32", False), ("bias_term", 2, OPT, "bool", False),
                             ("pad", 3, REP, "uint32", False), ("kernel_size", 4, REP, "uint32", False),
                             ("group", 5, OPT, "uint32", False), ("stride", 6, REP, "uint32", False),
                             ("pad_h", 9, OPT, "uint32", False), ("pad_w", 10, OPT, "uint32", False),
                             ("kernel_h", 11, OPT, "uint32", False), ("kernel_w", 12, OPT, "uint32", False),
                             ("stride_h", 13, OPT, "uint32", False), ("stride_w", 14, OPT, "uint32", False)],
    "PoolingParameter": [("pool", 1, OPT, ".caffe.PoolingParameter.PoolMethod", False),
                         ("kernel_size", 2, OPT, "uint32", False), ("stride", 3, OPT, "uint32", False),
                         ("pad", 4, OPT, "uint32", False), ("kernel_h", 5, OPT, "uint32", False),
                         ("kernel_w", 6, OPT, "uint32", False), ("stride_h", 7, OPT, "uint32", False),
                         ("stride_w", 8, OPT, "uint32", False), ("pad_h", 9, OPT, "uint32", False),
                         ("pad_w", 10, OPT, "uint32", False)],
    "LRNParameter": [("local_size", 1, OPT, "uint32", False), ("alpha", 2, OPT, "float", False),
                     ("beta", 3, OPT, "float", False),
                     ("norm_region", 4, OPT, ".caffe.LRNParameter.NormRegion", False),
                     ("k", 5, OPT, "float", False)],
    "InnerProductParameter": [("num_output", 1, OPT, "uint32", False), ("bias_term", 2, OPT, "bool", False),
                              ("axis", 5, OPT, "int32", False)],
    "DropoutParameter": [("dropout_ratio", 1, OPT, "float", False)],
    "ReLUParameter": [("negative_slope", 1, OPT, "float", False)],
    "NetStateRule": [("phase", 1, OPT, ".caffe.Phase", False)],
    "LayerParameter": [("name", 1, OPT, "string", False), ("type", 2, OPT, "string", False),
                       ("bottom", 3, REP, "string", False), ("top", 4, REP, "string", False),
                       ("blobs", 7, REP, ".caffe.BlobProto", False),
                       ("include", 8, REP, ".caffe.NetStateRule", False)],
    "V1LayerParameter": [("bottom", 2, REP, "string", False), ("top", 3, REP, "string", False),
                         ("name", 4, OPT, "string", False),
                         ("type", 5, OPT, ".caffe.V1LayerParameter.LayerType", False),
                         ("blobs", 6, REP, ".caffe.BlobProto", False)],
    "NetParameter": [("name", 1, OPT, "string", False), ("input", 3, REP, "string", False),
                     ("input_shape", 8, REP, ".caffe.BlobShape", False),
                     ("input_dim", 4, REP, "int32", False),
                     ("layer", 100, REP, ".caffe.LayerParameter", False),
                     ("layers", 2, REP, ".caffe.V1LayerParameter", False)],
}

# the layer parameter messages: their field numbers in LayerParameter and in V1LayerParameter
for _field, _message, _new, _v1 in [("convolution_param", "ConvolutionParameter", 106, 10),
                                    ("dropout_param", "DropoutParameter", 108, 12),
                                    ("inner_product_param", "InnerProductParameter", 117, 17),
                                    ("lrn_param", "LRNParameter", 118, 18),
                                    ("pooling_param", "PoolingParameter", 121, 19),
                                    ("relu_param", "ReLUParameter", 123, 30)]:
    MESSAGES["LayerParameter"].append((_field, _new, OPT, ".caffe." + _message, False))
    MESSAGES["V1LayerParameter"].append((_field, _v1, OPT, ".caffe." + _message, False))

ENUMS = {  # (owner message or None, enum name) -> values
    ("PoolingParameter", "PoolMethod"): [("MAX", 0), ("AVE", 1), ("STOCHASTIC", 2)],
    ("LRNParameter", "NormRegion"): [("ACROSS_CHANNELS", 0), ("WITHIN_CHANNEL", 1)],
    (None, "Phase"): [("TRAIN", 0), ("TEST", 1)],
    ("V1LayerParameter", "LayerType"): [
        ("NONE", 0), ("ACCURACY", 1), ("CONCAT", 3), ("CONVOLUTION", 4), ("DATA", 5), ("DROPOUT", 6),
        ("INNER_PRODUCT", 14), ("LRN", 15), ("POOLING", 17), ("RELU", 18), ("SIGMOID", 19),
        ("SOFTMAX", 20), ("SOFTMAX_LOSS", 21), ("TANH", 23), ("ELTWISE", 25)],
}


def _build(packed_data=True):
    fdp = descriptor_pb2.FileDescriptorProto(name="loadcaffe_test_caffe_%d.proto" % packed_data, package="caffe",
                                             syntax="proto2")
    msgs = {}
    for name, fields in MESSAGES.items():
        m = fdp.message_type.add(name=name)
        msgs[name] = m
        for fname, number, label, ftype, packed in fields:
            f = m.field.add(name=fname, number=number, label=label)
            if ftype in T:
                f.type = T[ftype]
            else:
                f.type_name = ftype
                f.type = F.TYPE_ENUM if ftype.rsplit(".", 1)[-1] in {e for _, e in ENUMS} else F.TYPE_MESSAGE
            if packed and (packed_data or name != "BlobProto"):
                f.options.packed = True
    for (owner, ename), values in ENUMS.items():
        e = (msgs[owner].enum_type if owner else fdp.enum_type).add(name=ename)
        for vname, number in values:
            e.value.add(name=vname, number=number)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName("caffe." + name))
            for name in MESSAGES}


CLASSES = _build()
NetParameter = CLASSES["NetParameter"]
BlobProto = CLASSES["BlobProto"]
# the same messages with blob data written one float per field, as old Caffe versions did
UNPACKED = _build(packed_data=False)


def binary(net, packed=True):
    """The .caffemodel bytes of a NetParameter (blob data packed or, as older files, not)."""
    data = net.SerializeToString()
    if packed:
        return data
    return UNPACKED["NetParameter"].FromString(data).SerializeToString()


def blob(array, legacy=False, packed=True):
    """A BlobProto holding `array` (float32, row-major): shape in `shape`, or in the deprecated
    num/channels/height/width (padded in front with 1s) when legacy."""
    import numpy as np
    b = BlobProto()
    a = np.asarray(array, dtype=np.float32)
    if legacy:
        d = [1] * (4 - a.ndim) + list(a.shape)
        b.num, b.channels, b.height, b.width = d
    else:
        b.shape.dim.extend(a.shape)
    b.data.extend(a.ravel().tolist())
    return b


def text(net):
    """The prototxt (protobuf text format) of a NetParameter, without its blobs."""
    copy = NetParameter()
    copy.CopyFrom(net)
    for layer in list(copy.layer) + list(copy.layers):
        del layer.blobs[:]
    return text_format.MessageToString(copy)
