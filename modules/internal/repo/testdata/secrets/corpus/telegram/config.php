<?php
$telegramBotApiToken .= '8932@@5231:A6yivkaeaae0ut-l4aaslv7kgi30ol_eotd';
