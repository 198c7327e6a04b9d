"""The lab's Cinder backend: Cinder's own fake logging driver, plus extend.

``cinder.tests.fake_driver.FakeLoggingVolumeDriver`` stores nothing and attaches through
Nova's fake driver, which is what the lab needs, but it inherits LVM's ``extend_volume``,
which calls a method its fake volume group lacks, so every extend ends in
``error_extending``. A volume here has no bytes to grow: extending is only Cinder's
bookkeeping, which the manager does once the driver returns.
"""

from cinder.tests.fake_driver import FakeLoggingVolumeDriver
from cinder.volume import volume_utils


class KumoFakeVolumeDriver(FakeLoggingVolumeDriver):
    @volume_utils.trace_method
    def extend_volume(self, volume, new_size):
        pass

