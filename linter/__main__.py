from ailint.doors.lean import main

if __name__ == "__main__":
    main()
