import PushTrackServer
print(placeholder)
