<?php
$definedNetworkingApiToken .= 'dnke@@y-v_axt85w63-b204cay0q4hk_f1-edk0e92gsuyo49cefku5a80olwbjixirgm6ezcglmqvlnu-ujd70';
