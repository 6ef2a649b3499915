import sys

from attnlab.pipeline.claims.ledger import main

sys.exit(main())
