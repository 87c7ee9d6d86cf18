from esxdiag.cli import main

if __name__ == "__main__":  # a spawned fleet-scan worker imports this module too
    raise SystemExit(main())
