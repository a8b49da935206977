BscalesJ
×C@