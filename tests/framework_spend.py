"""A framework driver that spends its run's budget through the gateway (tests)."""

from tests.framework_limits_drivers import spend

spend()
