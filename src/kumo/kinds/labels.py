"""Labels and annotations Kumo puts on the objects it creates."""

GROUP_LABEL = "kumo.dev/group"
TEMPLATE_HASH_LABEL = "kumo.dev/template-hash"
#: A stateful group's member and its Volume objects: the member's ordinal.
ORDINAL_LABEL = "kumo.dev/ordinal"
#: A stateful group's Volume object: the volume template it was made from.
VOLUME_TEMPLATE_LABEL = "kumo.dev/volume-template"
