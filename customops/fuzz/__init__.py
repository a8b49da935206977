"""``customops fuzz``: a differential fuzzer of ONNX Runtime's built-in kernels, ours and onnx.reference.

Layout: :mod:`.case` (a case as data and as a one-node model), :mod:`.values` (ordinary and special values of
every element type), :mod:`.spaces` (per operator: generation from the registry, the validity oracle, invalid
mutations, simplifications; ``spaces.base`` is their shared vocabulary and ``spaces.simplifications`` the
shrinker's shared moves), :mod:`.dispatch` (which space serves an op, and a case drawn from it),
:mod:`.triage` (classification, signatures, shrinking), :mod:`.campaign` (plans, shards, grouping),
:mod:`.summary` (the typed campaign summary: summary.json as dataclasses), :mod:`.groups` (a campaign's
directory: a reproducer per group), :mod:`.report` (the table and the findings page), :mod:`.merge` (campaign
directories merged), :mod:`.files` (summary.json and finding.json read as untrusted data, against a schema),
customops.eval.judging.deviations labels groups with documented deviations, and :mod:`.command` (what the
command does with its checked arguments: a campaign, ``merge``, ``replay``). The worker processes of the sides
are customops.eval.running.worker and customops.eval.running.runner; the command's arguments are
customops.cli.fuzz.

Importing this package is cheap: numpy, onnx and onnxruntime are imported by the command itself.
"""
