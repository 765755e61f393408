"""Training the entity-preserving token compressor: data, fine-tuning, export, evaluation.

Needs the ``train`` extra (torch, transformers, datasets, onnx). Nothing heavy is imported
here; each module imports torch or datasets inside the functions that need them.

Modules: :mod:`~odcf.training.labels` (label rules), :mod:`~odcf.training.data` (builder),
:mod:`~odcf.training.finetune` (training loop), :mod:`~odcf.training.export` (ONNX, int8,
parity), :mod:`~odcf.training.evaluate` (held-out figures).
"""
