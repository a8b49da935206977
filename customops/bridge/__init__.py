"""The onnxruntime-extensions bridge: registrations of our kernels as Python custom ops, the hook that
hands their outputs back without ``tolist()``, attribute encoding, and :class:`runtime.InferenceSession`.
(Named ``bridge``, not ``ort``, so that ``import onnxruntime as ort`` keeps its usual meaning here.)"""
