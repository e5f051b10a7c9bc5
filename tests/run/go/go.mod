module reticletest

go 1.19
