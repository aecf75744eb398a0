() => {
  // What microphone.js and session_lost.js tell each other, one object handed to both (they were
  // flags on document.body's dataset, set in one file and read in the other):
  // - restoring: session_lost.js is putting the prompt back after a reload; Generate waits for it.
  // - pressHeld: a Generate press waits for the prompt's upload (microphone.js); a reload
  //   meanwhile cuts it off, and the note after the reload says so.
  return {restoring: false, pressHeld: false};
}
