"""Reading a Piper voice's PyTorch parameters back out of its ONNX file.

Piper exports VITS with ``torch.onnx.export``, which keeps most parameter names
(``enc_p.encoder.attn_layers.0.conv_q.weight``). Three kinds are renamed by the exporter:

- weights folded from weight-normalized convolutions appear as ``onnx::Conv_NNNN``; the Conv node
  that reads them is named after the module (``/flow/flows.0/enc/in_layers.0/Conv``), which gives
  the parameter name back;
- the text embedding is the data input of the ``Gather`` node that reads the graph input ``input``;
- the duration predictor's first flow stores ``exp(-logs)`` as a folded constant, found as the
  constant the ``/dp/flows.0/Mul`` node multiplies by.

The convolutions' dilations and paddings are read from the graph too, so the PyTorch model uses
exactly what was exported.
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass
class OnnxVoiceWeights:
    """Parameters by PyTorch name (float32 numpy arrays) and per-module conv attributes."""

    params: dict[str, np.ndarray]
    conv_dilation: dict[str, int]  # module name -> dilation
    conv_stride: dict[str, int]  # module name -> stride


def _module_name(node_name: str) -> str:
    # "/flow/flows.0/enc/in_layers.0/Conv" -> "flow.flows.0.enc.in_layers.0"
    return ".".join(node_name.strip("/").split("/")[:-1])


def load_onnx_weights(model_path: str) -> OnnxVoiceWeights:
    """Load every parameter the VITS inference path needs from a Piper ONNX voice.

    Raises:
        ValueError: the file is not a Piper VITS export of the expected shape.
    """
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(model_path))
    graph = model.graph
    raw = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    params: dict[str, np.ndarray] = {k: v.astype(np.float32) for k, v in raw.items() if not k.startswith(("/", "onnx::"))
                                     and "." in k}
    dilation: dict[str, int] = {}
    stride: dict[str, int] = {}
    for node in graph.node:
        if node.op_type in ("Conv", "ConvTranspose"):
            module = _module_name(node.name)
            for attr in node.attribute:
                if attr.name == "dilations":
                    dilation[module] = int(attr.ints[0])
                elif attr.name == "strides":
                    stride[module] = int(attr.ints[0])
            for suffix, name in zip(("weight", "bias"), node.input[1:]):
                if name in raw and not name.startswith(module):
                    params[f"{module}.{suffix}"] = raw[name].astype(np.float32)
        elif node.op_type == "Gather" and "input" in node.input and node.input[0] in raw:
            params["enc_p.emb.weight"] = raw[node.input[0]].astype(np.float32)
        elif node.name == "/dp/flows.0/Mul":
            const = [raw[i] for i in node.input if i in raw]
            if const:
                params["dp.flows.0.exp_neg_logs"] = const[0].astype(np.float32)
    for required in ("enc_p.emb.weight", "dp.flows.0.exp_neg_logs", "dec.conv_pre.weight", "flow.flows.0.pre.weight"):
        if required not in params:
            raise ValueError(f"{model_path}: not a Piper VITS voice (no {required})")
    return OnnxVoiceWeights(params=params, conv_dilation=dilation, conv_stride=stride)
