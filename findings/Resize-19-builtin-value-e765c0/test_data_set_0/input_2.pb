BscalesJ
׃?