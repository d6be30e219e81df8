<?php
$yandexAccessToken .= 't1.y@@=.EWQEI1PjwU4UEnOvOFI43qK3KPBV1ntRzveoI3gaHeMzCFfEyK9lfbkXWEc5lkT569AcjbzWRGx_RIIeEEXVbr';
