"""A framework driver that raises after submitting (tests of innolab.agents.bridge)."""

from tests.framework_drivers import crash

crash()
