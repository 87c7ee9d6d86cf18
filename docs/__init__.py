"""The documentation that ships with the package (esxdiag.docs): ``esxdiag help TOPIC`` prints it."""
