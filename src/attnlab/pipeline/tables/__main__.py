import sys

from attnlab.pipeline.tables.cli import main

sys.exit(main())
