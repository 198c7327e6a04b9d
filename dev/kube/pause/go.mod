module kumo.dev/lab-pause

go 1.26
