"""`esxdiag` and `python -m esxdiag`. The console script imports this module, not esxdiag.cli: a
spawned fleet-scan worker runs the parent's main script again, and must not import the command line."""


def main() -> int:
    from esxdiag.cli import main as cli_main
    return cli_main()


if __name__ == "__main__":
    raise SystemExit(main())
