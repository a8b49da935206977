"""The onnxruntime-extensions bridge: registrations of our kernels as Python custom ops (registration.py),
the hook that hands their outputs back without ``tolist()`` (hook.py), where a failing kernel's error goes
(routing.py), Ctrl-C around the hook (interrupts.py), :class:`session.InferenceSession` (session.py), the
bench's seams (seams.py), attribute encoding (attrs.py) and the check of models already in our domain
(domain.py).
(Named ``bridge``, not ``ort``, so that ``import onnxruntime as ort`` keeps its usual meaning here.)"""
