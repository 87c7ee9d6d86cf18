"""What admins install beside ``esxdiag serve``, shipped with the package (esxdiag.contrib): Prometheus
alert rules and their tests, a Grafana dashboard, a systemd unit. ``esxdiag help contrib`` says where."""
