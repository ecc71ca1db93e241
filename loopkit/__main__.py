from loopkit.main import main

raise SystemExit(main())
