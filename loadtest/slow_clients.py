"""Holds slow connections to the collector until stdin closes: half idle (connected, nothing
sent), half trickling a request header one byte every second (slowloris). Prints how many it
opened, then, at the end, how many the server had closed."""
import socket
import sys
import threading
import time

host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
idle, trickling = [], []
for number in range(count):
    s = socket.create_connection((host, port))
    if number % 2:
        s.sendall(b"POST /customer-track/upload-event HTTP/1.1\r\nHost: x\r\n")
        trickling.append(s)
    else:
        idle.append(s)
print(f"opened {len(idle)} idle and {len(trickling)} trickling connections", flush=True)

done = threading.Event()
closed = set()


def trickle():
    header = b"X-Slow: " + b"a" * 200
    position = 0
    while not done.wait(1.0):
        for s in trickling:
            if s in closed:
                continue
            try:
                s.send(header[position % len(header) : position % len(header) + 1])
            except OSError:
                closed.add(s)
        position += 1


thread = threading.Thread(target=trickle)
thread.start()
sys.stdin.read()
done.set()
thread.join()
for s in idle:
    s.setblocking(False)
    try:
        if s.recv(1) == b"":
            closed.add(s)
    except BlockingIOError:
        pass
    except OSError:
        closed.add(s)
print(f"closed by the server meanwhile: {len([s for s in idle if s in closed])} idle, "
      f"{len([s for s in trickling if s in closed])} trickling", flush=True)
