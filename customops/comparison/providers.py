"""Execution providers for the built-in side: ORT's names or short aliases, checked against what the
installed onnxruntime offers. Our side always runs on CPU (our kernels are Python custom ops)."""

from __future__ import annotations

from collections.abc import Sequence

from customops.errors import CustomOpsError

ALIASES = {
    "cpu": "CPUExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "tensorrt": "TensorrtExecutionProvider",
    "trt": "TensorrtExecutionProvider",
    "dml": "DmlExecutionProvider",
    "directml": "DmlExecutionProvider",
    "openvino": "OpenVINOExecutionProvider",
    "coreml": "CoreMLExecutionProvider",
    "rocm": "ROCMExecutionProvider",
    "migraphx": "MIGraphXExecutionProvider",
    "qnn": "QNNExecutionProvider",
    "xnnpack": "XnnpackExecutionProvider",
}
"""Short names users type, to ORT's provider names (case-insensitive)."""

DEFAULT = ("CPUExecutionProvider",)


def resolve(names: Sequence[str] | None) -> list[str]:
    """The ORT names of ``names`` (aliases or ORT names, in order of preference), each available in this
    onnxruntime; CustomOpsError naming the available ones otherwise. None or empty: CPU."""
    import onnxruntime as ort

    if not names:
        return list(DEFAULT)
    available = ort.get_available_providers()
    by_lower = {p.lower(): p for p in available}
    resolved: list[str] = []
    for name in names:
        full = ALIASES.get(name.strip().lower(), name.strip())
        if full.lower() not in by_lower:
            raise CustomOpsError(
                f"execution provider {name!r} is not available in this onnxruntime "
                f"(available: {', '.join(available)}; aliases: {', '.join(sorted(ALIASES))})"
            )
        if by_lower[full.lower()] not in resolved:
            resolved.append(by_lower[full.lower()])
    return resolved
