"""A framework driver that makes one tool call, then hangs (tests of innolab.agents.bridge)."""

from tests.framework_drivers import hang

hang()
