print("rawfx")
