# The capture layer (V4l2Camera: frames whose payload is the driver's capture buffer), included
# from src/CMakeLists.txt: above frame and image, below ipc and the surfaces.
memhal_layer(capture)
