"""The project's vocabulary: every severity, fleet class, ring verdict and cause id, each with its
meaning, severity rule, rank and alert (enums and frozen registries: an unknown id fails at import or
in a test), and the names both sides of a stage boundary use. Collectors, rules, analysis and reports
import them from here, never from each other (README "Layout": imports point down the pipeline)."""

from esxdiag.vocabulary.causes import PORT_CAUSES, CauseId, EventId
from esxdiag.vocabulary.classes import (CLASSES, CONCERN_CLASSES, DROP_CLASSES, FLEET_CLASSES, ClassInfo, FleetClass,
                                        class_rank, needs_attention)
from esxdiag.vocabulary.names import (DIFF_RATES, DIFF_SIZES, DIFF_TOTALS, MIGRATION_EVENTS, NOT_VSPHERE_NICS,
                                      SCHEMA_FLEET_REPORT, SCHEMA_SNAPSHOT)
from esxdiag.vocabulary.severity import (ALERTED, SEVERITIES, SEVERITY_VALUES, Severity, drop_severity,
                                         severity_order)
from esxdiag.vocabulary.verdicts import VERDICT_INFO, VERDICTS, Verdict, VerdictInfo, verdicts_giving

__all__ = ["ALERTED", "CLASSES", "CONCERN_CLASSES", "DIFF_RATES", "DIFF_SIZES", "DIFF_TOTALS", "DROP_CLASSES",
           "FLEET_CLASSES", "MIGRATION_EVENTS", "NOT_VSPHERE_NICS", "PORT_CAUSES", "SCHEMA_FLEET_REPORT",
           "SCHEMA_SNAPSHOT", "SEVERITIES", "SEVERITY_VALUES", "VERDICTS", "VERDICT_INFO", "CauseId", "ClassInfo",
           "EventId", "FleetClass", "Severity", "Verdict", "VerdictInfo", "class_rank", "drop_severity",
           "needs_attention", "severity_order", "verdicts_giving"]
