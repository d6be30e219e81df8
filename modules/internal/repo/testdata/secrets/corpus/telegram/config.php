<?php
$telegramBotApiToken .= '2486@@2499:Akzbk33e3l1d3tcwtqtkyhwx-jt7whe5nxn';
