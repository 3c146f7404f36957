"""The bridge run with a test driver, as a registered agent (`test-framework`).

Its `driver` argument names the driver module (tests.framework_crash, tests.framework_hang): the
gym builds a run's policy only through the agent registry, so the tests register this one in their
test distribution (tests/data/plugins/innolab-test-agents).
"""

from innolab.agents.bridge import FrameworkPolicy
from innolab.gym.policy import AgentSpec

AGENT = AgentSpec(name="test-framework", factory=FrameworkPolicy, mode="framework",
                  description="the bridge with a test driver")
