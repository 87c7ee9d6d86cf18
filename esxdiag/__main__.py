from esxdiag.cli import main

raise SystemExit(main())
