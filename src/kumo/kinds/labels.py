"""Labels and annotations Kumo puts on the objects it creates."""

GROUP_LABEL = "kumo.dev/group"
TEMPLATE_HASH_LABEL = "kumo.dev/template-hash"
