import subprocess
import sys


def test_import_odcf_loads_no_heavy_library():
    code = (
        "import sys, odcf, odcf.compressor, odcf.pipeline, odcf.cli.main\n"
        "odcf.cli.main.build_parser()\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'onnxruntime', 'spacy', 'ray', 'transformers', 'jieba'))\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
