import subprocess
import sys


def test_model_stages_load_no_model_library_until_warm_up():
    code = (
        "import sys\n"
        "import odcf.backends.embedder, odcf.backends.ner\n"
        "import odcf.stages.entities, odcf.stages.rerank, odcf.stages.dedup, odcf.stages.verify\n"
        "from odcf.pipeline import Pipeline, DEFAULT_ENABLED\n"
        "from odcf.plan.model import Plan\n"
        "p = Pipeline.from_plan(Plan(domain='d'))\n"
        "names = [s.name for s in p.stages]\n"
        "assert all(n in names for n in ('entities', 'rerank', 'dedup', 'verify') if DEFAULT_ENABLED[n]), names\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'onnxruntime', 'spacy', 'tokenizers'))\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
