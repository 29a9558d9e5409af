from replay_contract.cli import main

raise SystemExit(main())
