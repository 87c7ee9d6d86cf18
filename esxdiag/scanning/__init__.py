"""What a fleet scan does, below the commands (README "Layout": nothing imports a command module).
`esxdiag scan` and each cycle of `esxdiag serve` call one function, esxdiag.scanning.run.run_scan:
the API pass -> the snapshot -> the fleet rules -> the deep check -> the proofs kept -> the history.

* options: add_fleet_options' values checked, the vCenters and their logins, the API pass's options
* deep: the deep check of the chosen suspects (DeepPlan, DeepCheck)
* proofs: proven ring exhaustion kept across scans while valid
* run: run_scan, the sequence
"""
