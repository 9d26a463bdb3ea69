from harvey.cli import main

main()
