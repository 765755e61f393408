import sys

from odcf.cli.main import main

sys.exit(main())
