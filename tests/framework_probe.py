"""A framework driver that probes its confinement (tests)."""

from tests.framework_limits_drivers import probe

probe()
