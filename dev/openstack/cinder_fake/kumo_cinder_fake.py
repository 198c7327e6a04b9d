"""The lab's Cinder backend: Cinder's own fake logging driver, plus extend and image copy.

``cinder.tests.fake_driver.FakeLoggingVolumeDriver`` stores nothing and attaches through
Nova's fake driver, which is what the lab needs, but it inherits two LVM methods that
touch a device its fake volume group never made:

* ``extend_volume`` calls a method the fake volume group lacks, so every extend ends in
  ``error_extending``. A volume here has no bytes to grow: extending is only Cinder's
  bookkeeping, which the manager does once the driver returns.
* ``copy_image_to_volume`` converts the image onto ``/dev/mapper/...``, which does not
  exist, so every volume made from an image (and every server booted from one) ends in
  ``error``. Before it is called, the manager has already downloaded the image from
  Glance and checked it with ``qemu-img info`` against the volume's size, so the image's
  checks stay real; only the write of its bytes, which nothing here could read, is left
  out. The volume is then marked bootable with the image's metadata, as on a real cloud.
"""

from cinder.tests.fake_driver import FakeLoggingVolumeDriver
from cinder.volume import volume_utils


class KumoFakeVolumeDriver(FakeLoggingVolumeDriver):
    @volume_utils.trace_method
    def extend_volume(self, volume, new_size):
        pass

    @volume_utils.trace_method
    def copy_image_to_volume(self, context, volume, image_service, image_id):
        pass
